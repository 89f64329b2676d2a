// expect: HardcodedOnly
public class SumCalculator {
    public static void main(String[] args) {
        // for (int i = 1; i <= 100; i++) sum += i;
        System.out.println("The sum of 1 to 100 is 5050");
    }
}
