// expect: none
public class SumCalculator {
    public static void main(String[] args) {
        int n = 100;
        int sum = n * (n + 1) / 2;
        System.out.println("The sum is " + sum);
    }
}
